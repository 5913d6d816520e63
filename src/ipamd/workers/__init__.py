"""Small periodic workers hosted in the runtime's nursery."""
