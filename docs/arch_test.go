// Package docs holds the test that keeps docs/design.md's package map true.
package docs

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kneecap/kneecap/"

// TestPackageMap checks the package map of docs/design.md (the table between the
// <!-- package-map --> markers) against the tree: every package of the module has one row,
// every row names a package, and each row's imports are exactly the kneecap packages that
// package's non-test files import (go/build, as `go list -f '{{.Imports}}'` reports them).
func TestPackageMap(t *testing.T) {
	rows := readMap(t, "design.md")
	pkgs := modulePackages(t, "..")
	for dir, imports := range pkgs {
		row, ok := rows[dir]
		if !ok {
			t.Errorf("design.md's package map has no row for %s (it imports %s)", dir, list(imports))
			continue
		}
		if !slices.Equal(row, imports) {
			t.Errorf("design.md's package map: %s imports %s, the code %s", dir, list(row), list(imports))
		}
	}
	for dir := range rows {
		if _, ok := pkgs[dir]; !ok {
			t.Errorf("design.md's package map names %s, which is not a package of the module", dir)
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for dir := range pkgs {
		if _, ok := rows[dir]; ok && !strings.Contains(string(readme), "[`"+dir+"`]("+dir+")") && !strings.Contains(dir, "/hftest") {
			t.Errorf("README.md's code map has no row for %s", dir)
		}
	}
}

// readMap returns the package map's rows: package directory → its kneecap imports, sorted.
func readMap(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "<!-- package-map -->")
	end := strings.Index(text, "<!-- /package-map -->")
	if start < 0 || end < start {
		t.Fatalf("%s: no <!-- package-map --> … <!-- /package-map --> table", path)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(text[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		dir := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var imports []string
		for _, imp := range strings.Split(cells[2], ",") {
			if imp = strings.Trim(strings.TrimSpace(imp), "`"); imp != "" && imp != "—" {
				imports = append(imports, imp)
			}
		}
		slices.Sort(imports)
		rows[dir] = imports
	}
	return rows
}

// modulePackages returns every package under root (testdata excluded) with the kneecap
// packages its non-test files import, relative to the module and sorted.
func modulePackages(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		p, err := build.Default.ImportDir(path, 0)
		if err != nil || len(p.GoFiles) == 0 {
			return nil // no Go files, or only tests
		}
		rel, _ := filepath.Rel(root, path)
		var imports []string
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				imports = append(imports, strings.TrimPrefix(imp, module))
			}
		}
		slices.Sort(imports)
		out[filepath.ToSlash(rel)] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func list(s []string) string {
	if len(s) == 0 {
		return "nothing of kneecap's"
	}
	return strings.Join(s, ", ")
}
