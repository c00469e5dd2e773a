// Package toolflags holds the command-line flags that bench/ and soak/
// share, spelled and defaulted the same in both: where the repository, the
// binary and the report are, the scale preset, the fixture loader's
// parallelism, -keep and -note; and the command line a report prints.
package toolflags

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
)

// Common are the shared flags' values.
type Common struct {
	Root, CoreDNS, OutDir string
	Scale                 string
	Loaders               int
	Keep                  bool
	Note                  string
}

// Register adds the shared flags to fs. report names what -out receives,
// kept what -keep keeps, scale how the small preset differs.
func (c *Common) Register(fs *flag.FlagSet, report, kept, scale string) {
	fs.StringVar(&c.Root, "root", "..", "the repository's top directory")
	fs.StringVar(&c.CoreDNS, "coredns", "", "the CoreDNS binary (default ROOT/bin/coredns)")
	fs.StringVar(&c.OutDir, "out", "", "where "+report+" go (default ROOT/docs)")
	fs.StringVar(&c.Scale, "scale", "default", "preset: "+scale)
	fs.IntVar(&c.Loaders, "loaders", 16, "parallel API requests of the fixture loader")
	fs.BoolVar(&c.Keep, "keep", false, "keep the work directory ("+kept+")")
	fs.StringVar(&c.Note, "note", "", "a line printed at the top of the report (for example what else the machine was doing)")
}

// Parse parses args into fs, then sets the values of the -scale preset
// (from presets, by scale name) for the flags the command line did not
// give.
func (c *Common) Parse(fs *flag.FlagSet, args []string, presets map[string]map[string]string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	preset, ok := presets[c.Scale]
	if !ok {
		return fmt.Errorf("unknown -scale %q (default or small)", c.Scale)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, value := range preset {
		if !given[name] {
			if err := fs.Set(name, value); err != nil {
				return fmt.Errorf("preset %s: %w", name, err)
			}
		}
	}
	return nil
}

// Finish makes Root absolute and fills in the binary and the output
// directory under it when they were not given.
func (c *Common) Finish() error {
	root, err := filepath.Abs(c.Root)
	if err != nil {
		return fmt.Errorf("-root: %w", err)
	}
	c.Root = root
	if c.CoreDNS == "" {
		c.CoreDNS = filepath.Join(root, "bin", "coredns")
	}
	if c.OutDir == "" {
		c.OutDir = filepath.Join(root, "docs")
	}
	if c.Loaders < 1 {
		return fmt.Errorf("-loaders must be at least 1")
	}
	return nil
}

// ShellJoin joins args as a shell reads them back, each single-quoted
// where it holds anything but plain characters: the command line a report
// gives to reproduce its run.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return !strings.ContainsRune(shellPlain, r) }) {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// shellPlain are the characters a shell reads as they are.
const shellPlain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%"
