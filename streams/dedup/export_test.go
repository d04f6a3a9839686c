package dedup

// BloomKey is bloomKey, for the external tests.
var BloomKey = bloomKey
