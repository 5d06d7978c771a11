"""Documents a user uploads: read into pages (`reading`), cut into passages (`passages`)."""
