package clitest

import (
	"strings"
)

// ShellCommand is one simple command of a shell script: its words, quotes removed.
type ShellCommand struct {
	// Line is the 1-based line of the script the command starts on.
	Line int
	// Words are the command's words, with quotes and escapes resolved and
	// redirections (2>&1, > file) left out.
	Words []string
}

// ShellCommands splits a shell script into its simple commands, enough to read the
// command lines of documentation: it knows quotes, backslash escapes and line
// continuations, comments, the separators ; & && | || and newlines, subshells,
// $(...) and `...` substitutions (their commands are listed too), redirections and
// here-documents (whose bodies are skipped). Variables are not expanded.
func ShellCommands(script string) []ShellCommand {
	l := &lexer{line: 1}
	l.run(script)
	l.endCmd()
	return l.cmds
}

type lexer struct {
	cmds     []ShellCommand
	cur      ShellCommand
	word     strings.Builder
	inWord   bool
	dropNext bool     // the next word is a redirection's target
	heredocs []string // delimiters of here-documents whose bodies start at the next line
	line     int
}

func (l *lexer) endWord() {
	if !l.inWord {
		return
	}
	w := l.word.String()
	l.word.Reset()
	l.inWord = false
	if l.dropNext {
		l.dropNext = false
		return
	}
	l.cur.Words = append(l.cur.Words, w)
}

func (l *lexer) endCmd() {
	l.endWord()
	if len(l.cur.Words) > 0 {
		l.cmds = append(l.cmds, l.cur)
	}
	l.cur = ShellCommand{}
	l.dropNext = false
}

// start starts a word, if none is being read, on the current line.
func (l *lexer) start() {
	if !l.inWord && len(l.cur.Words) == 0 {
		l.cur.Line = l.line
	}
	l.inWord = true
}

func (l *lexer) add(c byte) {
	l.start()
	l.word.WriteByte(c)
}

// run lexes s; modes is a stack: 'n' plain, 'p' in $(...), 'b' in `...`, 'd' in "...".
func (l *lexer) run(s string) {
	modes := []byte{'n'}
	for i := 0; i < len(s); i++ {
		c := s[i]
		mode := modes[len(modes)-1]
		if mode == 'd' {
			switch {
			case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
				i++
				if s[i] == '\n' {
					l.line++
				} else {
					l.add(s[i])
				}
			case c == '"':
				modes = modes[:len(modes)-1]
			case c == '$' && i+1 < len(s) && s[i+1] == '(':
				l.endCmd()
				modes = append(modes, 'p')
				i++
			case c == '`':
				l.endCmd()
				modes = append(modes, 'b')
			default:
				if c == '\n' {
					l.line++
				}
				l.add(c)
			}
			continue
		}
		switch {
		case c == '\n':
			l.line++
			l.endCmd()
			if len(l.heredocs) > 0 {
				i = l.skipHeredocs(s, i+1) - 1
			}
		case c == ' ' || c == '\t':
			l.endWord()
		case c == '#' && !l.inWord:
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] == '\n' {
					l.line++ // a continuation
					continue
				}
				l.add(s[i])
			}
		case c == '\'':
			l.start()
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			l.word.WriteString(s[i+1 : i+1+j])
			l.line += strings.Count(s[i+1:i+1+j], "\n")
			i += j + 1
		case c == '"':
			l.start()
			modes = append(modes, 'd')
		case c == '$' && strings.HasPrefix(s[i:], "$(("):
			j := strings.Index(s[i:], "))")
			if j < 0 {
				j = len(s) - i - 2
			}
			for _, b := range []byte(s[i : i+j+2]) {
				l.add(b)
			}
			i += j + 1
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			l.endCmd()
			modes = append(modes, 'p')
			i++
		case c == '`' && mode == 'b':
			l.endCmd()
			modes = modes[:len(modes)-1]
		case c == '`':
			l.endCmd()
			modes = append(modes, 'b')
		case c == ')' && mode == 'p':
			l.endCmd()
			modes = modes[:len(modes)-1]
		case c == '(' || c == ')' || c == ';' || c == '&' || c == '|':
			l.endCmd()
		case c == '<' && strings.HasPrefix(s[i:], "<<") && !strings.HasPrefix(s[i:], "<<<"):
			l.dropDigits()
			i = l.heredoc(s, i+2) - 1
		case c == '<' || c == '>':
			l.dropDigits()
			for i+1 < len(s) && strings.IndexByte("<>|", s[i+1]) >= 0 {
				i++
			}
			if i+1 < len(s) && s[i+1] == '&' {
				i++
				for i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-') {
					i++
				}
				continue
			}
			l.dropNext = true
		default:
			l.add(c)
		}
	}
}

// dropDigits ends the current word, dropping it if it is a file descriptor ("2" of 2>).
func (l *lexer) dropDigits() {
	w := l.word.String()
	if l.inWord && w != "" && strings.Trim(w, "0123456789") == "" {
		l.word.Reset()
		l.inWord = false
		return
	}
	l.endWord()
}

// heredoc reads the delimiter after "<<" at s[i:] and returns the offset after it.
func (l *lexer) heredoc(s string, i int) int {
	strip := i < len(s) && s[i] == '-'
	if strip {
		i++
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) && strings.IndexByte(" \t\n;&|<>)", s[j]) < 0 {
		j++
	}
	d := strings.Trim(s[i:j], `'"\`)
	if strip {
		d = "\t" + d
	}
	l.heredocs = append(l.heredocs, d)
	return j
}

// skipHeredocs skips the bodies of the pending here-documents from s[i:] and returns
// the offset after the last delimiter line.
func (l *lexer) skipHeredocs(s string, i int) int {
	for _, d := range l.heredocs {
		strip := strings.HasPrefix(d, "\t")
		d = strings.TrimPrefix(d, "\t")
		for i < len(s) {
			j := strings.IndexByte(s[i:], '\n')
			end := len(s)
			if j >= 0 {
				end = i + j
			}
			ln := s[i:end]
			i = end + 1
			l.line++
			if strip {
				ln = strings.TrimLeft(ln, "\t")
			}
			if ln == d {
				break
			}
		}
	}
	l.heredocs = nil
	if i > len(s) {
		i = len(s)
	}
	return i
}
