"""Commands a user runs beside the build: compare, validate, submit, wanted."""
