// Package wire is the form a fetched spiders.Response takes on the responses stream,
// between the fetch stage that writes it and the parse stage, archiver and replays that
// read it: one home for response encoding, used by package handlers and its fetcher.
//
// This build writes version 3 (Version): a 4-byte marker "SCR\x03", the length of a JSON
// head as a uvarint, the head (request, URL, status, headers, body length, charset,
// truncation, fetch time, renderer: everything but the body), then the body as it came.
// That content is stored in one of three ways, chosen by the spider's
// response_compression setting (CompressionFor gives the default):
//
//   - a zstd frame (fastest, default, better): it starts with the zstd magic number, the
//     message's content_encoding is zstd, and the frame header names the crawl's
//     dictionary when one compressed it;
//   - an S2 block (s2) after its own marker "SCS\x03", content_encoding s2;
//   - plain (off): the content as it is, starting with the version 3 marker.
//
// Unmarshal reads all three, and the older versions too: version 2 was the whole response
// as JSON (the body a JSON string, or base64) in a zstd frame; version 1 kept the JSON
// plain and compressed the body alone. UnmarshalLimit never decompresses past what a
// body of the spider's max_body_size can take (ErrBodyTooLarge), so a small forged entry
// cannot make a reader allocate gigabytes.
//
// Dictionaries: a zstd dictionary trained on a crawl's first responses (TrainDict, on
// their Plain content) makes the ones after it smaller. A frame names its dictionary's
// ID (DictID); it decodes once the dictionary is registered in the process
// (RegisterDict), and ErrUnknownDict until then. Publishing a crawl's dictionary in Redis
// and loading it by ID is package handlers' work (handlers/response_dict.go).
//
// Each file holds one part:
//
//	wire.go         the format: Version, the markers, Encoding and Compressed, the size bounds
//	compression.go  the compression settings (CompressS2, ...): levels, defaults, the cached zstd encoders
//	marshal.go      Marshal, MarshalDict, MarshalWith and Plain: a response to its stored bytes
//	unmarshal.go    Unmarshal and UnmarshalLimit: stored bytes of any version to a response, bounded
//	json.go         reading versions 1 and 2 (JSON)
//	dict.go         dictionaries: Dict, NewDict, TrainDict, RegisterDict, DictID, the decoders per dictionary
//	detach.go       Detach (a response as decoding gives it back, without the trip) and Size
package wire
