"""The book's site: Sphinx extensions, the HTML check, the verdict changelog and the verdict table."""
