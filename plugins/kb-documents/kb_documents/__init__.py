"""kb plugin: PDF and Word documents."""
