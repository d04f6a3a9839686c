// Package clitest holds what the tests of both commands (streamcrawl, streamcrawl-bench)
// use to keep README.md and the pages of docs/ honest, so that they cannot rot:
//
//   - generated.go, flags.go: the generated tables (commands, flags) and CheckGenerated, which keeps a
//     table between its "<!-- generated:NAME -->" and "<!-- end:NAME -->" markers equal
//     to the code (and rewrites it on request);
//   - settingsdoc.go: SettingsKeys and SettingsTable, every YAML key of
//     spiders.Settings with its type, default and doc comment;
//   - markdown.go: LoadPages and ParsePage (lines, fenced blocks, heading anchors by
//     GitHub's slug rules, code spans), and Problem, a finding at a file and line;
//   - links.go: CheckLinks, relative links and anchors that resolve in the repository;
//   - yamlblocks.go: CheckYAMLBlocks, yaml blocks that the spider loader takes;
//   - shell.go and commands.go: ShellCommands splits the command lines of sh blocks,
//     CheckCommands and CheckArgs check the commands and flags they run;
//   - once.go: CheckMarkers and CheckDuplicateRows, every generated table once and no
//     hand-written row repeating what one lists.
package clitest
