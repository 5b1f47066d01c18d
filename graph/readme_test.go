package graph_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestReadmeQuickStart checks that the README's quick start is Example_quickStart's body, so the code a new
// user copies first is code that compiles and prints what it says.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block, err := readmeGoBlock(string(readme), "## Quick start")
	if err != nil {
		t.Fatal(err)
	}
	body, err := exampleBody("readme_example_test.go", "Example_quickStart")
	if err != nil {
		t.Fatal(err)
	}
	if block != body {
		t.Errorf("README.md's quick start is not the body of Example_quickStart in graph/readme_example_test.go.\n"+
			"Change both together: make the example compile and pass (go test ./graph -run Example_quickStart),\n"+
			"then copy its body, one tab less indented, into the README's Go block.\n"+
			"First differing line %d:\nREADME:  %q\nExample: %q", firstDiff(block, body)...)
	}
}

// readmeGoBlock returns the first ```go block after the heading line, without its fences.
func readmeGoBlock(md, heading string) (string, error) {
	_, rest, ok := strings.Cut(md, "\n"+heading+"\n")
	if !ok {
		return "", fmt.Errorf("README.md has no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	if !ok {
		return "", fmt.Errorf("README.md has no ```go block after %q", heading)
	}
	block, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		return "", fmt.Errorf("README.md's Go block after %q is not closed", heading)
	}
	return block, nil
}

// exampleBody returns the statements of function name in file, one tab less indented.
func exampleBody(file, name string) (string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return "", err
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name || fn.Body == nil {
			continue
		}
		inner := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
		lines := strings.Split(strings.Trim(inner, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, "\t")
		}
		return strings.Join(lines, "\n"), nil
	}
	return "", fmt.Errorf("%s has no function %s", file, name)
}

// firstDiff returns the 1-based number of the first line where a and b differ, and the two lines.
func firstDiff(a, b string) []any {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; ; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y || i >= len(al) || i >= len(bl) {
			return []any{i + 1, x, y}
		}
	}
}
