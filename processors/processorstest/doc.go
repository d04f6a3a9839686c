// Package processorstest starts real, throw-away PostgreSQL servers for the tests of sinks,
// on free loopback ports, and stops them when the test ends. It never mocks the database:
// the machine needs the PostgreSQL server binaries (Debian: apt-get install postgresql).
package processorstest
