"""Session compression: the context for the next model turn, fitted to a token budget."""
