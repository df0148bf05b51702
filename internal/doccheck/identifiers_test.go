package doccheck

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// modulePath is the module's import path: an import under it names a directory of root.
const modulePath = "github.com/modulo-testing/modulo"

// TestQuotedIdentifiersExist checks every Go identifier that README.md and docs/ quote in a
// code span as a package-qualified name (`kit.DiskState`, `plugintest.Config.Known`,
// `proc.ProcessSpec{NetNS: r.NetNS}`'s `proc.ProcessSpec`) against the module's source: the
// package's name is one of the module's packages, and it declares the name (a type, function,
// variable or constant), or the type has the member (a method, a field, an interface's method,
// one of an embedded or aliased type's). A span that names no package of the module (`hclog.L()`,
// `fs.LoopbackRoot`) is not checked: the docs' word on other projects is theirs. So are a
// member of a type quoted by the type's name alone (`Cluster.Await`: a type the module
// declares, in any of its packages) and a member of one of the variables the docs name as the
// kit's own methods do (receivers: `r.Dir`, `c.StartSource`, `spec.BasePort`).
func TestQuotedIdentifiersExist(t *testing.T) {
	pkgs := loadPackages(t)
	checked := 0
	for _, doc := range docFiles(t) {
		for _, s := range codeSpans(t, doc) {
			for _, q := range qualifiedIdents(s.text) {
				var ok bool
				switch typ, isVar := receivers[q[0]]; {
				case isVar:
					ok = pkgs.declares([]string{typ[0], typ[1], q[1]})
				case pkgs.byName[q[0]] != nil:
					ok = pkgs.declares(q)
				default:
					continue
				}
				checked++
				if !ok {
					t.Errorf("%s:%d: `%s` names %s, which the module's source does not declare", doc, s.line, s.text, strings.Join(q, "."))
				}
			}
			for _, q := range typeMembers(s.text) {
				ok, known := pkgs.typeHas(q[0], q[1])
				if !known {
					continue
				}
				checked++
				if !ok {
					t.Errorf("%s:%d: `%s` names %s, which no type %s of the module's source has", doc, s.line, s.text, strings.Join(q, "."), q[0])
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d quoted identifiers; the docs quote far more: is the pattern still right?", checked)
	}
}

// TestQuotedPathsExist checks every path that README.md and docs/ quote in a code span as a file
// or directory of the repository: a word of the span, relative, made of a path's characters
// alone (no placeholder such as <ID>, no glob), whose first element is a directory at the
// repository's top (plugins/redis/testdata/known-bugs.txt, ./scripts/knownbugs, cem/kit) or
// that ends with a source or document's extension (a .md, .go, .sh or .proto named from the
// repository's top). Paths of a campaign (modulo-results/slr), of a server's files
// (streams/modulo/msgs) and outside the repository (../shared, ~/.cache) are not the
// repository's and are not checked.
func TestQuotedPathsExist(t *testing.T) {
	top := topDirs(t)
	checked := 0
	for _, doc := range docFiles(t) {
		for _, s := range codeSpans(t, doc) {
			for _, p := range repoPaths(s.text, top) {
				checked++
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s:%d: `%s` names %s, which is not in the repository", doc, s.line, s.text, p)
				}
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked %d quoted paths; the docs quote far more: is the pattern still right?", checked)
	}
}

// bugPages is the directory of the findings' pages, which README.md's table of findings links.
const bugPages = "docs/bugs"

// TestRelativeLinksResolve checks every relative link of README.md, docs/ and the plugins'
// READMEs ([text](target)):
// the file or directory it names exists, and a fragment names a heading of the Markdown page it
// points to (GitHub's anchors). A link that leaves the repository is not checked. Links into
// docs/bugs/ are checked in a subtest of their own, which is skipped, naming them, while that
// directory does not exist: the findings' pages are written apart from the pages that link them.
func TestRelativeLinksResolve(t *testing.T) {
	type link struct {
		doc    string
		line   int
		target string
	}
	var links, bugLinks []link
	readmes, err := filepath.Glob(filepath.Join(root, "plugins", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := docFiles(t)
	for _, r := range readmes {
		rel, err := filepath.Rel(root, r)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, filepath.ToSlash(rel))
	}
	for _, doc := range docs {
		for _, l := range markdownLinks(t, doc) {
			target, _, _ := strings.Cut(l.target, "#")
			resolved := l.target
			if target != "" {
				resolved = path.Join(path.Dir(doc), l.target)
			}
			if resolved == ".." || strings.HasPrefix(resolved, "../") {
				continue
			}
			if strings.HasPrefix(resolved, bugPages+"/") {
				bugLinks = append(bugLinks, link{doc, l.line, resolved})
				continue
			}
			links = append(links, link{doc, l.line, resolved})
		}
	}
	check := func(t *testing.T, links []link) {
		t.Helper()
		for _, l := range links {
			if err := resolves(l.doc, l.target); err != nil {
				t.Errorf("%s:%d: link %s: %v", l.doc, l.line, l.target, err)
			}
		}
	}
	if len(links) < 20 {
		t.Errorf("found %d relative links; the docs have far more: is the pattern still right?", len(links))
	}
	check(t, links)
	t.Run("bugs", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(root, bugPages)); err != nil {
			var names []string
			for _, l := range bugLinks {
				names = append(names, fmt.Sprintf("%s:%d %s", l.doc, l.line, l.target))
			}
			t.Skipf("%s does not exist yet; %d links into it not checked:\n%s", bugPages, len(bugLinks), strings.Join(names, "\n"))
		}
		check(t, bugLinks)
	})
}

// resolves tells why target (relative to root, "#fragment" for one in doc itself) does not
// resolve, or nil when it does.
func resolves(doc, target string) error {
	file, fragment, _ := strings.Cut(target, "#")
	if file == "" {
		file = doc
	}
	if _, err := os.Stat(filepath.Join(root, file)); err != nil {
		return fmt.Errorf("no such file or directory in the repository")
	}
	if fragment == "" || !strings.HasSuffix(file, ".md") {
		return nil
	}
	anchors, err := headingAnchors(file)
	if err != nil {
		return err
	}
	if !anchors[fragment] {
		return fmt.Errorf("%s has no heading whose anchor is #%s", file, fragment)
	}
	return nil
}

// docFiles lists README.md and every Markdown file under docs/, relative to root, with slashes.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list docs/: %v", err)
	}
	return files
}

// span is an inline code span of a Markdown file, outside fenced code blocks.
type span struct {
	line int // where it begins, from 1
	text string
}

// proseLines reads doc (relative to root) with every line of a fenced code block blanked, so
// that line numbers stay those of the file.
func proseLines(t *testing.T, doc string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatalf("read %s: %v", doc, err)
	}
	defer f.Close()
	var lines []string
	fence := ""
	indented := false // in a code block indented by four spaces, which a blank line opens
	prevBlank := true
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		blank := strings.TrimSpace(line) == ""
		code := fence == "" && !blank && (strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")) && (prevBlank || indented)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			line = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			line = ""
		case code:
			line = ""
		}
		if !blank {
			indented = code
		}
		prevBlank = blank
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", doc, err)
	}
	return lines
}

// codeSpans returns doc's inline code spans as CommonMark reads them: a run of n backticks
// opens a span that the next run of exactly n closes, across line breaks (each read as a
// space).
func codeSpans(t *testing.T, doc string) []span {
	t.Helper()
	text := strings.Join(proseLines(t, doc), "\n")
	var spans []span
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := runLen(text, i)
		end := -1
		for j := i + n; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			m := runLen(text, j)
			if m == n {
				end = j
				break
			}
			j += m
		}
		if end < 0 {
			i += n // an unmatched run is literal backticks
			continue
		}
		body := strings.TrimSpace(strings.ReplaceAll(text[i+n:end], "\n", " "))
		spans = append(spans, span{line: 1 + strings.Count(text[:i], "\n"), text: body})
		i = end + n
	}
	return spans
}

// runLen is the length of the run of backticks at text[i].
func runLen(text string, i int) int {
	n := 0
	for i+n < len(text) && text[i+n] == '`' {
		n++
	}
	return n
}

// qualifiedIdent finds package-qualified exported names: a package's name (lower case), then
// one or two exported names. What precedes it must not continue a word, a selector or a path,
// so that r.NetNS's NetNS or a path's element is not read as a package.
var qualifiedIdent = regexp.MustCompile(`(?:^|[^\w./\-])([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)

// receivers are the variables the docs name as the kit's methods name them, and their types
// (package and type): a quoted `r.Dir` is a field of kit.Replica.
var receivers = map[string][2]string{
	"r":    {"kit", "Replica"},
	"c":    {"kit", "Cluster"},
	"spec": {"cem", "ClusterSpec"},
}

// typeMember finds an exported type's exported member quoted without its package
// (`Cluster.Await`), preceded by nothing that continues a word, a selector or a path.
var typeMember = regexp.MustCompile(`(?:^|[^\w./\-])([A-Z]\w*)\.([A-Z]\w*)`)

// typeMembers returns [type, member] for each in a code span.
func typeMembers(text string) [][]string {
	var out [][]string
	for _, m := range typeMember.FindAllStringSubmatch(text, -1) {
		out = append(out, []string{m[1], m[2]})
	}
	return out
}

// qualifiedIdents returns the qualified names in a code span: [package, name] or
// [package, type, member].
func qualifiedIdents(text string) [][]string {
	var out [][]string
	for _, m := range qualifiedIdent.FindAllStringSubmatch(text, -1) {
		q := []string{m[1], m[2]}
		if m[3] != "" {
			q = append(q, m[3])
		}
		out = append(out, q)
	}
	return out
}

// pathWord is a relative path made of a path's characters alone.
var pathWord = regexp.MustCompile(`^(\./)?[A-Za-z0-9_][A-Za-z0-9_.\-]*(/[A-Za-z0-9_.\-]+)*/?$`)

// sourceExts are the extensions of the repository's own files that a path names from the
// repository's top even when its first element is no directory there.
var sourceExts = []string{".md", ".go", ".sh", ".proto"}

// repoPaths returns the words of a code span that name paths of the repository (see
// TestQuotedPathsExist), relative to root, without a leading "./".
func repoPaths(text string, top map[string]bool) []string {
	var out []string
	for _, w := range strings.Fields(text) {
		if !strings.Contains(w, "/") || !pathWord.MatchString(w) {
			continue
		}
		w = strings.TrimPrefix(w, "./")
		first, _, _ := strings.Cut(w, "/")
		if top[first] || slices.Contains(sourceExts, path.Ext(w)) {
			out = append(out, strings.TrimSuffix(w, "/"))
		}
	}
	return out
}

// topDirs lists the directories at the repository's top that belong to it: not hidden, and
// not one that .gitignore names (bin/, a campaign's modulo-results/).
func topDirs(t *testing.T) map[string]bool {
	t.Helper()
	ignored := map[string]bool{}
	if data, err := os.ReadFile(filepath.Join(root, ".gitignore")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			ignored[strings.Trim(strings.TrimSpace(line), "/")] = true
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatalf("list the repository: %v", err)
	}
	top := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !ignored[e.Name()] {
			top[e.Name()] = true
		}
	}
	return top
}

// mdLink is a Markdown link's target, outside code.
type mdLink struct {
	line   int
	target string
}

// linkTarget finds inline links' targets: ](target), the target without a title.
var linkTarget = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// markdownLinks returns doc's relative link targets (not http, https or mailto), outside code
// blocks and code spans.
func markdownLinks(t *testing.T, doc string) []mdLink {
	t.Helper()
	var links []mdLink
	for i, line := range proseLines(t, doc) {
		for _, m := range linkTarget.FindAllStringSubmatchIndex(line, -1) {
			if strings.Count(line[:m[0]], "`")%2 == 1 {
				continue // inside a code span
			}
			target := line[m[2]:m[3]]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links = append(links, mdLink{line: i + 1, target: target})
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives the headings of doc (relative to root): the
// heading's text in lower case, without its Markdown, with spaces as hyphens and every
// character but letters, digits, hyphens and underscores dropped; a repeated anchor gets -1,
// -2...
func headingAnchors(doc string) (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level < 1 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		a := slug(line[level+1:])
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}

// markup is the Markdown a heading's anchor leaves out: links' targets, and emphasis and code
// marks.
var markup = regexp.MustCompile(`\]\([^)]*\)`)

// slug is GitHub's anchor of a heading's text.
func slug(heading string) string {
	heading = markup.ReplaceAllString(strings.TrimSpace(heading), "]")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// packages indexes the module's Go packages by name and by directory.
type packages struct {
	byName map[string][]*pkgDecls
	byDir  map[string]*pkgDecls // by directory relative to root, with slashes
}

// pkgDecls is what one package declares at its top level, and its types' members.
type pkgDecls struct {
	top     map[string]bool
	members map[string]map[string]bool // type name -> methods, fields, interface methods
	// more lists, per type, the types whose members are its own too: the fields it embeds,
	// the type an alias stands for.
	more map[string][]typeRef
}

// typeRef names a type of the module: its package's directory and its name.
type typeRef struct{ dir, name string }

// declares tells whether the module declares q: [package, name] or [package, type, member].
func (ps *packages) declares(q []string) bool {
	for _, p := range ps.byName[q[0]] {
		if len(q) == 2 && p.top[q[1]] || len(q) == 3 && ps.hasMember(p, q[1], q[2], 0) {
			return true
		}
	}
	return false
}

// typeHas tells whether a type named typ, in any package of the module, has member m; known
// says whether the module declares a type of that name at all.
func (ps *packages) typeHas(typ, m string) (ok, known bool) {
	for _, p := range ps.byDir {
		if _, declared := p.members[typ]; !declared && !p.top[typ] {
			continue
		}
		known = true
		if ps.hasMember(p, typ, m, 0) {
			return true, true
		}
	}
	return false, known
}

// hasMember tells whether type typ of p has member m, its own or through the types it embeds
// or aliases (depth bounds a cycle).
func (ps *packages) hasMember(p *pkgDecls, typ, m string, depth int) bool {
	if p == nil || depth > 8 {
		return false
	}
	if p.members[typ][m] {
		return true
	}
	for _, r := range p.more[typ] {
		if ps.hasMember(ps.byDir[r.dir], r.name, m, depth+1) {
			return true
		}
	}
	return false
}

// loadPackages parses every Go file of the module (test files of a package included, external
// test packages and testdata left out).
func loadPackages(t *testing.T) *packages {
	t.Helper()
	ps := &packages{byName: map[string][]*pkgDecls{}, byDir: map[string]*pkgDecls{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
		if strings.HasSuffix(f.Name.Name, "_test") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		pd := ps.byDir[dir]
		if pd == nil {
			pd = &pkgDecls{top: map[string]bool{}, members: map[string]map[string]bool{}, more: map[string][]typeRef{}}
			ps.byDir[dir] = pd
			ps.byName[f.Name.Name] = append(ps.byName[f.Name.Name], pd)
		}
		pd.add(f, dir)
		return nil
	})
	if err != nil {
		t.Fatalf("read the module's source: %v", err)
	}
	if len(ps.byName["kit"]) == 0 {
		t.Fatal("the module's source has no package kit: is root right?")
	}
	return ps
}

// add records the declarations of f, a file of the package in dir.
func (pd *pkgDecls) add(f *ast.File, dir string) {
	imports := map[string]string{} // a file's name for an import of the module -> its directory
	for _, im := range f.Imports {
		ip, _ := strconv.Unquote(im.Path.Value)
		rel, ok := strings.CutPrefix(ip, modulePath+"/")
		if !ok {
			continue
		}
		name := path.Base(rel)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = rel
	}
	// ref names the module's type that expr (an embedded field's type, an alias's) is.
	ref := func(expr ast.Expr) (typeRef, bool) {
		if star, ok := expr.(*ast.StarExpr); ok {
			expr = star.X
		}
		switch e := expr.(type) {
		case *ast.Ident:
			return typeRef{dir, e.Name}, true
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && imports[x.Name] != "" {
				return typeRef{imports[x.Name], e.Sel.Name}, true
			}
		}
		return typeRef{}, false
	}
	member := func(typ, name string) {
		if pd.members[typ] == nil {
			pd.members[typ] = map[string]bool{}
		}
		pd.members[typ][name] = true
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				pd.top[d.Name.Name] = true
				continue
			}
			recv := d.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			if idx, ok := recv.(*ast.IndexExpr); ok { // a generic type's method
				recv = idx.X
			}
			if id, ok := recv.(*ast.Ident); ok {
				member(id.Name, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						pd.top[n.Name] = true
					}
				case *ast.TypeSpec:
					name := s.Name.Name
					pd.top[name] = true
					if s.Assign.IsValid() {
						if r, ok := ref(s.Type); ok {
							pd.more[name] = append(pd.more[name], r)
						}
					}
					var fields *ast.FieldList
					switch ty := s.Type.(type) {
					case *ast.StructType:
						fields = ty.Fields
					case *ast.InterfaceType:
						fields = ty.Methods
					}
					if fields == nil {
						continue
					}
					for _, fl := range fields.List {
						for _, n := range fl.Names {
							member(name, n.Name)
						}
						if len(fl.Names) == 0 { // embedded
							if r, ok := ref(fl.Type); ok {
								member(name, r.name)
								pd.more[name] = append(pd.more[name], r)
							}
						}
					}
				}
			}
		}
	}
}
