"""Writes of Layer 1, one module per concern: API keys, tenants, end users, versioned
preferences and facts, profile patches, agent settings and the staff audit they share."""
