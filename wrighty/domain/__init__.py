"""Pure domain: states, transitions, outcome classes. No I/O lives here."""
