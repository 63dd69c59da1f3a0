"""The terminal inbox (`wrighty inbox`); Textual is imported only here."""
