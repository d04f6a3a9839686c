// Package processors holds what happens to items after a spider yields them: sinks that
// store them durably and, later, processors that validate, clean and enrich them on the
// way.
//
// A Sink's Store returns only after the item is durable (written and fsynced for files,
// committed for PostgreSQL), because the store stage acks an item's stream entry as soon
// as Store returns. Sinks are idempotent by item key (spiders.Item.Key), so an item
// delivered again after a crash is not written twice, and concurrent Store calls share
// one write (group commit). Open picks a sink from the --out value:
//
//   - JSONL (OpenJSONL): one JSON object per line. At open it indexes the keys in the
//     file and cuts a torn last line. It remembers the last 131,072 keys written (3 MB,
//     whatever the size of the file), which is where a redelivered item's key is: the
//     crawl's item dedup sends each key to the store stage once, and an item is acked
//     once written, so only the unacked last ones of a killed worker come again.
//   - CSV (OpenCSV): a header row, then one row per item. The columns are given, or
//     _key, _type, _url, _crawled_at and the first item's fields, sorted; a reopened file
//     keeps its header. Fields without a column are dropped and counted; values that are
//     not strings are JSON-encoded. Idempotent and crash-safe like JSONL, through the
//     _key column.
//   - PostgreSQL (OpenPostgres, or a postgres:// URL with ?table=name): one row per key
//     in a table created when missing, with a comment on each column (PostgresColumns:
//     key primary key, type, url, crawled_at, fields and meta as jsonb, stored_at,
//     version, changed). Store calls are batched into one INSERT ... ON CONFLICT (key)
//     DO UPDATE ... WHERE the stored version is lower, so several store processes can
//     share a table, a redelivered item is reported as not stored, and a newer version
//     replaces its row. A failed batch fails every call in it (the pipeline retries
//     them), except that a batch rejected for one row's data is retried row by row so
//     only that item fails.
//
// No sink writes the crawler's own request meta (keys starting with "_", such as a
// revisit's "_revisit" state: spiders.UserMeta): an item's _meta, or its meta column,
// holds the user's keys only.
//
// The JSONL and CSV sinks share one core (appendfile.go): the file, its key index, the
// group-commit writer and the cut of a torn tail; each sink only encodes its records.
//
// A new sink runs processorstest.TestSink from its tests: the contract suite that the
// sinks here run too (contract_test.go). It gives the suite a new target (file, table)
// per subtest and a way to read back what the target holds, declares what the sink does
// beyond the contract (processorstest.SinkFeatures: reopening, versions, items missing
// their key), and the suite checks durability on return, idempotence with concurrent
// duplicates, redelivery after a crash, versions and Close. Package processorstest also
// starts real PostgreSQL servers for the tests.
package processors
