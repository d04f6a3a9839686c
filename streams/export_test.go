package streams

// Test access to unexported parts (test builds only).
var (
	ParseClusterURL = parseClusterURL
	Trim            = trim
	ParseRetention  = parseRetention
)
