"""HTML plumbing shared by the HTML surfaces: render(), htmx helpers, form parsing, locales."""
