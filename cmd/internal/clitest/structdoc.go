package clitest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"strings"
)

// StructTable is the Markdown table of the exported fields of the struct typeName
// declared in the Go package in dir (test files aside): field, Go type, and its doc
// comment, whitespace collapsed. It documents a configuration a Go user fills
// (handlers.Options) from the source, so the table cannot drift from it.
func StructTable(dir, typeName string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return "", fmt.Errorf("clitest: %w", err)
		}
		var st *ast.StructType
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == typeName {
				st, _ = ts.Type.(*ast.StructType)
				return false
			}
			return st == nil
		})
		if st == nil {
			continue
		}
		var b strings.Builder
		b.WriteString("| field | type | meaning |\n|---|---|---|\n")
		for _, fld := range st.Fields.List {
			var typ bytes.Buffer
			if err := printer.Fprint(&typ, fset, fld.Type); err != nil {
				return "", fmt.Errorf("clitest: %w", err)
			}
			doc := strings.Join(strings.Fields(fld.Doc.Text()), " ")
			for _, id := range fld.Names {
				if id.IsExported() {
					fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", id.Name, Cell(typ.String()), textCell(doc))
				}
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("clitest: no struct %s in %s", typeName, dir)
}
