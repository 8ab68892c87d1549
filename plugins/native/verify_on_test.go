package native

// Every compile in this package's tests checks its rewrites.
func init() { verifyRewrites = true }
