"""The built-in vendor adapters, by adapter name (wrighty/domain/adapters.py lists the names;
a test keeps the two in step)."""

from __future__ import annotations

from wrighty.vendors.base import Vendor
from wrighty.vendors.claude import Claude
from wrighty.vendors.codex import Codex
from wrighty.vendors.gemini import Gemini

VENDORS: dict[str, Vendor] = {vendor.name: vendor for vendor in (Claude(), Codex(), Gemini())}
