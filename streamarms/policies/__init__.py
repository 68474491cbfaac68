"""Pure-exploration policies, one module per algorithm family."""
