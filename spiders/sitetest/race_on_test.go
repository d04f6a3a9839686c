//go:build race

package sitetest

const raceEnabled = true
