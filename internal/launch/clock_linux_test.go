package launch

// clockNTPExpected: Linux says how well its clock is synchronised (adjtimex).
const clockNTPExpected = true
