package streams

// Stage names; each is the consumer group that reads the stage's input stream.
const (
	StageFetch = "fetch"
	StageParse = "parse"
	StageStore = "store"
)
