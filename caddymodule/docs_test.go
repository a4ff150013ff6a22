package caddymodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/policies"
)

// The documents whose snippets TestDocs checks, relative to this package.
const (
	docsRepoRoot    = ".."
	docsSystemdUnit = "../dist/toolgate.service"
)

// TestDocs checks every fenced block of README.md and docs/*.md by its
// info string, so that what an operator copies from the documentation
// still works: a Caddyfile adapts, a policy loads, a JSON config decodes
// into the module's structs, a shell command names real subcommands,
// flags and packages. It also checks the relative links and their
// mdAnchors, and the commands of the systemd unit. See docs/testing.md
// ("The documentation's snippets") for the info strings.
func TestDocs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(docsRepoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(docsRepoRoot, "README.md")}, files...)
	if len(files) < 2 {
		t.Fatalf("no docs/*.md found beside README.md")
	}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(docsRepoRoot, file)
		blocks := mdFencedBlocks(string(text))
		if len(blocks) == 0 && name == "README.md" {
			t.Errorf("README.md has no fenced blocks")
		}
		for _, b := range blocks {
			t.Run(fmt.Sprintf("%s:%d", name, b.line), func(t *testing.T) {
				checkDocBlock(t, b)
			})
		}
		t.Run(name+":links", func(t *testing.T) {
			checkDocLinks(t, file, string(text))
		})
	}
	t.Run("dist/toolgate.service", func(t *testing.T) {
		unit, err := os.ReadFile(docsSystemdUnit)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(string(unit), "\n") {
			if cmd, ok := strings.CutPrefix(l, "ExecStart="); ok {
				checkDocShell(t, cmd)
				n++
			}
			if cmd, ok := strings.CutPrefix(l, "ExecReload="); ok {
				checkDocShell(t, cmd)
				n++
			}
		}
		if n != 2 {
			t.Errorf("want ExecStart and ExecReload, found %d", n)
		}
	})
}

// docBlock is one fenced block of a Markdown file.
type docBlock struct {
	line int    // of the opening fence, 1-based
	info string // the info string: language and words after it
	text string // the content, with the fence's indentation removed
}

// mdFencedBlocks reads the ``` blocks of a Markdown text, also indented ones
// (in a list item).
func mdFencedBlocks(md string) []docBlock {
	var out []docBlock
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " ")
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := len(lines[i]) - len(trimmed)
		b := docBlock{line: i + 1, info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			l := lines[i]
			if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
				l = l[indent:]
			}
			body = append(body, l)
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

func checkDocBlock(t *testing.T, b docBlock) {
	lang, rest, _ := strings.Cut(b.info, " ")
	switch lang {
	case "caddyfile":
		in := b.text
		switch rest {
		case "":
		case "fragment": // directives of one site: wrapped in a site block
			in = ":8080 {\n\t" + strings.ReplaceAll(strings.TrimSuffix(b.text, "\n"), "\n", "\n\t") + "\n}\n"
		default:
			t.Fatalf("caddyfile %q: want no word, or fragment", rest)
		}
		_, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(in), nil)
		if err != nil {
			t.Errorf("the Caddyfile does not adapt: %v\n%s", err, in)
		}
		if err == nil {
			validateCaddyfile(t, in)
		}
		// Caddy's warnings are advice the docs should already follow;
		// aligned comments are kept for reading.
		for _, w := range warnings {
			if strings.Contains(w.Message, "not formatted") {
				continue
			}
			t.Errorf("the Caddyfile adapts with a warning: %s", w.String())
		}
	case "yaml":
		switch rest {
		case "": // a policy file: it loads and matches the file's JSON Schema
			file := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(file, []byte(b.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := policies.Load(file); err != nil {
				t.Errorf("the policy does not load: %v", err)
			}
			validateYAML(t, docsPolicySchema, b.text)
		case "cases": // a toolgate policy test file: it matches its JSON Schema
			validateYAML(t, docsCasesSchema, b.text)
		default:
			t.Fatalf("yaml %q: want no word (a policy), or cases", rest)
		}
	case "json":
		checkJSON(t, []byte(b.text))
	case "sh":
		for _, cmd := range shellCommandLines(b.text) {
			checkDocShell(t, cmd)
		}
	case "go":
		src := b.text
		if !strings.HasPrefix(src, "package ") {
			src = "package snippet\n" + src
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "snippet.go", src, 0); err != nil {
			t.Errorf("the Go does not parse: %v", err)
		}
	case "", "text":
		// Output as a command prints it, or a picture: nothing to run.
	default:
		t.Errorf("info string %q: TestDocs knows caddyfile, yaml, yaml cases, json, sh, go, text and none; say how to check it", b.info)
	}
}

// The JSON Schemas of the policy file and of a cases file.
const (
	docsPolicySchema = "../policies/policy.schema.json"
	docsCasesSchema  = "../policies/cases.schema.json"
)

// docsSchemas are the schemas validateYAML compiled, by file.
var docsSchemas sync.Map

// validateYAML checks that a YAML document matches the JSON Schema in
// file, as an editor reading its "# yaml-language-server: $schema=" line
// does.
func validateYAML(t *testing.T, file, text string) {
	t.Helper()
	sch, ok := docsSchemas.Load(file)
	if !ok {
		c, err := jsonschema.NewCompiler().Compile(file)
		if err != nil {
			t.Fatalf("compiling %s: %v", file, err)
		}
		sch, _ = docsSchemas.LoadOrStore(file, c)
	}
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("the YAML does not parse: %v", err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("the YAML is not JSON data: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.(*jsonschema.Schema).Validate(v); err != nil {
		t.Errorf("it does not match %s: %#v", filepath.Base(file), err)
	}
}

// docsPolicy stands in for every policy file a snippet names: the
// provisioning that `toolgate validate` does needs one to load.
const docsPolicy = `app: Blog
actions:
  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
      required: [post]
    card:
      reason: Delete this post? This cannot be undone.
      record: http://blog.internal/posts/{post}
      rows:
        Post: title
    run:
      method: DELETE
      url: http://blog.internal/posts/{post}
    reply: Removed.
`

var caddyfilePolicyLine = regexp.MustCompile(`(?m)^(\s*policy )\S+`)

// validateCaddyfile does what `toolgate validate` does with a whole
// Caddyfile: adapt it and provision every module, without starting
// anything or opening the store, with its policies replaced by docsPolicy
// and its secret set (site blocks alone get the app's options first). It
// catches what adapting alone cannot: a pages URL
// that is not absolute, an unknown provider, a bad upstream.
func validateCaddyfile(t *testing.T, in string) {
	t.Helper()
	policy := docsEnv(t)
	in = caddyfilePolicyLine.ReplaceAllString(in, "${1}"+policy)
	// A snippet of site blocks takes the app's options from the page's
	// first Caddyfile; these stand in for them.
	if !strings.HasPrefix(strings.TrimSpace(in), "{") {
		in = "{\n\ttoolgate {\n\t\tsecret {env.TOOLGATE_SECRET}\n\t\tpages https://gate.example.com/toolgate\n\t}\n}\n" + in
	}
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(in), nil)
	if err != nil {
		t.Fatalf("adapting: %v", err)
	}
	var cfg caddy.Config
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := caddy.Validate(&cfg); err != nil {
		t.Errorf("the Caddyfile does not validate: %v", err)
	}
}

var jsonPolicyKey = regexp.MustCompile(`"policy":\s*"[^"]*"`)

// validateJSON provisions a JSON config's modules as `toolgate validate`
// does, its policies replaced by docsPolicy.
func validateJSON(t *testing.T, data []byte) {
	t.Helper()
	policy := docsEnv(t)
	quoted, _ := json.Marshal(policy)
	data = jsonPolicyKey.ReplaceAll(data, []byte(`"policy": `+string(quoted)))
	var cfg caddy.Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := caddy.Validate(&cfg); err != nil {
		t.Errorf("the config does not validate: %v", err)
	}
}

// docsEnv writes docsPolicy into a temporary folder and sets the
// environment the docs' configs read; it returns the policy's path.
func docsEnv(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	policy := filepath.Join(dir, "blog.yaml")
	if err := os.WriteFile(policy, []byte(docsPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLGATE_SECRET", "docs-secret-0123456789abcdef")
	t.Setenv("TOOLGATE_DATABASE_URL", "postgres://toolgate@127.0.0.1:1/toolgate")
	t.Setenv("XDG_DATA_HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", dir)
	return policy
}

// checkJSON parses a JSON block. A Caddy config (with "apps") or a handler
// object is decoded strictly into the module's config structs, so a key
// the code does not know fails.
func checkJSON(t *testing.T, data []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	obj, _ := v.(map[string]any)
	if _, ok := obj["apps"]; ok {
		var cfg caddy.Config
		decodeStrict(t, "the config", data, &cfg)
		if app, ok := obj["apps"].(map[string]any)["toolgate"]; ok {
			raw, _ := json.Marshal(app)
			decodeStrict(t, "apps.toolgate", raw, new(App))
		}
		validateJSON(t, data)
	}
	modules := map[string]func() any{
		"toolgate":       func() any { return new(Handler) },
		"toolgate_mcp":   func() any { return new(MCP) },
		"toolgate_pages": func() any { return new(PagesHandler) },
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if name, ok := v["handler"].(string); ok && modules[name] != nil {
				h := map[string]any{}
				for k, e := range v {
					if k != "handler" {
						h[k] = e
					}
				}
				raw, _ := json.Marshal(h)
				decodeStrict(t, "handler "+name, raw, modules[name]())
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
}

func decodeStrict(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// toolgateCommandTree is the toolgate command's tree as `toolgate` builds it: every
// command registered with Caddy (Caddy's own, and this module's policy and
// audit commands), with their flags.
func toolgateCommandTree() *cobra.Command {
	root := &cobra.Command{Use: "toolgate"}
	for _, c := range caddycmd.Commands() {
		cmd := &cobra.Command{Use: c.Name + " " + c.Usage, Short: c.Short}
		if c.CobraFunc != nil {
			c.CobraFunc(cmd)
		} else if c.Flags != nil {
			cmd.Flags().AddGoFlagSet(c.Flags)
		}
		root.AddCommand(cmd)
	}
	return root
}

// shellCommandLines splits a shell block into its commands: comments dropped,
// continued lines joined.
func shellCommandLines(text string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\") + " ")
			continue
		}
		cur.WriteString(l)
		if s := strings.TrimSpace(cur.String()); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
		cur.Reset()
	}
	return out
}

// docsNotRunnable are programs TestDocs does not run or check beyond their
// name: installers, system administration and HTTP clients, whose
// commands in the docs are examples for another machine.
var docsNotRunnable = []string{
	"apt-get", "sudo", "xcaddy", "npm", "curl", "export", "echo", "systemctl",
	"groupadd", "useradd", "install", "cp", "benchstat",
}

// checkDocShell checks one shell command line: each simple command in it
// (split at |, &&, || and ;) must be a toolgate command with real
// subcommands and flags, a go command naming packages that exist, a
// script that exists, or a program on the notRunnable list.
func checkDocShell(t *testing.T, line string) {
	t.Helper()
	words, err := shellSplitWords(line)
	if err != nil {
		t.Errorf("%s: %v", line, err)
		return
	}
	for _, cmd := range shellSplitCommands(words) {
		if len(cmd) == 0 {
			continue
		}
		prog, args := cmd[0], cmd[1:]
		switch {
		case prog == "toolgate" || prog == "caddy" || strings.HasSuffix(prog, "/toolgate"):
			checkToolgateCommand(t, line, args)
		case prog == "go":
			checkGoCommand(t, line, args)
		case prog == "bash":
			if len(args) == 0 || !repoPathExists(args[0]) {
				t.Errorf("%s: bash runs no script of this repository", line)
			}
		case slices.Contains(docsNotRunnable, prog):
		default:
			t.Errorf("%s: %q is neither toolgate, go, a script here, nor on docsNotRunnable", line, prog)
		}
	}
}

// checkToolgateCommand finds the subcommand, parses its flags and checks its
// number of arguments, as `toolgate` itself would before running it.
func checkToolgateCommand(t *testing.T, line string, args []string) {
	t.Helper()
	cli := toolgateCommandTree() // fresh flags: a command can appear on several lines
	cmd, rest, err := cli.Find(args)
	if err != nil || cmd == cli {
		t.Errorf("%s: no such toolgate command (%v)", line, err)
		return
	}
	if cmd.HasSubCommands() && !cmd.Runnable() {
		t.Errorf("%s: %s needs one of its subcommands, %s", line, cmd.CommandPath(), strings.Join(cobraSubcommandNames(cmd), ", "))
		return
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("%s: %s: %v", line, cmd.CommandPath(), err)
		return
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		t.Errorf("%s: %s: %v", line, cmd.CommandPath(), err)
	}
}

func cobraSubcommandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		names = append(names, c.Name())
	}
	return names
}

// checkGoCommand checks the packages a go command names. `go run ./cmd/toolgate
// ...` is checked as toolgate; `go run ./pkg -flag` checks the flags the
// program's main package defines with the flag package.
func checkGoCommand(t *testing.T, line string, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: go with no subcommand", line)
		return
	}
	for i, a := range args[1:] {
		if !strings.HasPrefix(a, "./") {
			continue
		}
		dir := strings.TrimSuffix(strings.TrimSuffix(a, "..."), "/")
		if !repoPathExists(dir) {
			t.Errorf("%s: no package %s", line, a)
			continue
		}
		if args[0] != "run" {
			continue
		}
		progArgs := args[i+2:]
		if filepath.Clean(dir) == filepath.Join("cmd", "toolgate") {
			checkToolgateCommand(t, line, progArgs)
		} else {
			checkMainFlags(t, line, dir, progArgs)
		}
		return
	}
}

var goFlagDef = regexp.MustCompile(`flag\.(?:Bool|String|Int|Int64|Uint|Float64|Duration)(?:Var\([^,]+,)?\(?\s*"([^"]+)"`)

// checkMainFlags checks the -flags given to a main package against the flag
// package's definitions in its source.
func checkMainFlags(t *testing.T, line, dir string, args []string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(docsRepoRoot, dir, "*.go"))
	known := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goFlagDef.FindAllStringSubmatch(string(src), -1) {
			known[m[1]] = true
		}
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !known[name] {
			t.Errorf("%s: %s has no flag -%s", line, dir, name)
		}
	}
}

// repoPathExists says whether a path relative to the repository's root exists.
func repoPathExists(path string) bool {
	_, err := os.Stat(filepath.Join(docsRepoRoot, path))
	return err == nil
}

// shellSplitWords splits a command line into words as a POSIX shell does for
// quotes and backslashes, keeping |, ||, &&, ; and redirections as words of
// their own. $(...) and variables are left as they are.
func shellSplitWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed '")
			}
			w.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				w.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, fmt.Errorf("unclosed \"")
			}
			inWord = true
			i = j
		case c == '\\' && i+1 < len(line):
			w.WriteByte(line[i+1])
			inWord = true
			i++
		case c == '#' && !inWord:
			flush()
			return words, nil
		case unicode.IsSpace(rune(c)):
			flush()
		case c == '|' || c == '&' || c == ';':
			flush()
			op := string(c)
			if i+1 < len(line) && line[i+1] == c {
				op += string(c)
				i++
			}
			words = append(words, op)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

var (
	shRedirect   = regexp.MustCompile(`^[0-9]*(>>?|<)(&[0-9]+)?`)
	shAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// shellSplitCommands splits words at |, ||, && and ;, and drops from each
// command its leading VAR=value assignments and its redirections.
func shellSplitCommands(words []string) [][]string {
	var out [][]string
	var cur []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "|" || w == "||" || w == "&&" || w == ";" || w == "&":
			out = append(out, cur)
			cur = nil
		case shRedirect.MatchString(w):
			if m := shRedirect.FindString(w); m == w && !strings.Contains(w, "&") {
				i++ // the file follows as a word of its own
			}
		case len(cur) == 0 && shAssignment.MatchString(w):
		default:
			cur = append(cur, w)
		}
	}
	return append(out, cur)
}

var (
	mdLinkTarget = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading    = regexp.MustCompile(`^#{1,6} (.+)$`)
)

// checkDocLinks checks the relative links of a Markdown file outside its code
// blocks: the file exists (within the repository) and so does the heading
// an anchor names.
func checkDocLinks(t *testing.T, file, md string) {
	t.Helper()
	for _, l := range mdProseLines(md) {
		for _, m := range mdLinkTarget.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
				if rel, err := filepath.Rel(docsRepoRoot, dest); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("link %s leaves the repository", target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("link %s: %v", target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			text, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(mdAnchors(string(text)), anchor) {
				t.Errorf("link %s: no heading makes the anchor #%s", target, anchor)
			}
		}
	}
}

// mdProseLines are the lines of a Markdown text outside fenced blocks.
func mdProseLines(md string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, l)
		}
	}
	return out
}

// mdAnchors are the anchors GitHub makes of a Markdown text's headings:
// lower case, punctuation but - and _ dropped, spaces made hyphens.
func mdAnchors(md string) []string {
	var out []string
	for _, l := range mdProseLines(md) {
		m := mdHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var a strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				a.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				a.WriteRune(r)
			}
		}
		out = append(out, a.String())
	}
	return out
}
