package streams

// Stage names; each is the consumer group that reads the stage's input stream.
const (
	StageFetch = "fetch"
	StageParse = "parse"
	StageStore = "store"
)

// StreamGroup is a stream and the stage group reading it.
type StreamGroup struct {
	Stream string
	Group  string
}
