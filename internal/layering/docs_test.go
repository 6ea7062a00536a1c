package layering

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsStandAlone checks that the front documents name no path outside
// the repository (a clone has no ../shared) and that their relative links
// resolve to files in it.
func TestDocsStandAlone(t *testing.T) {
	root := filepath.Join("..", "..")
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, doc := range []string{"README.md", "docs/ARCHITECTURE.md", "docs/PERFORMANCE.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for i, line := range strings.Split(text, "\n") {
			for _, bad := range []string{"../", "/work/", "shared/"} {
				if strings.Contains(line, bad) {
					t.Errorf("%s:%d: names a path outside the repository (%q): %s", doc, i+1, bad, line)
				}
			}
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			p := filepath.Join(root, filepath.Dir(doc), target)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: link %s does not resolve to a file in the repository", doc, target)
			}
		}
	}
}
