"""The operator's desk: what every entry point (the commands, the inbox, the web console, and
next a tracker or a chat reply) reads and does, in one place and in the same words
(docs/architecture.md). It imports none of the entry points; they import it."""
