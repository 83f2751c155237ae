// Package selfcheck is the client's check of itself (DESIGN §3.3): what the machine lets it
// carry (Limits: file descriptors, memory, ephemeral ports), how late it read and sent
// (read lag, scheduling and run-queue delay, CPU, GC pauses), and the verdict by distortion —
// how much its lateness can have moved each headline number of a level (the client-effect
// estimates), which makes a level client-bound when one exceeds the tolerance.
package selfcheck
