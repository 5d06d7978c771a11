"""A key's document collections as a service: creating and deleting them, and taking documents
in (uploaded files, pasted text, fetched URLs), each read in a bounded process of its own."""
