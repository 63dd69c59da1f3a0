"""`wrighty serve`: the web console (docs/web.md). Starlette, uvicorn and Jinja2 are imported
only here, and only when `wrighty serve` runs."""
