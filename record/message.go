package record

// Message is one message of a chat request's history.
type Message struct {
	// Role is RoleUser or RoleAssistant.
	Role string
	// Content is the message's text.
	Content string
}
