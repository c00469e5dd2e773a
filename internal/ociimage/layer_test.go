package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestLayer: entries in the order given, each missing parent directory
// first (0755, root), a directory named after it was written as a parent
// skipped, owners, symlinks, extended attributes as PAX records, and one
// time for all.
func TestLayer(t *testing.T) {
	mtime := time.Unix(1700000000, 0)
	files := []File{
		{Path: "/tmp/", Mode: 0o1777},
		{Path: "/usr/local/bin/tool", Mode: 0o750, UID: 65532, GID: 65533, Data: []byte("tool")},
		{Path: "/usr/", Mode: 0o700}, // already written as a parent
		{Path: "/bin/sh", Link: "busybox"},
		{Path: "/bin/busybox", Mode: 0o755, Data: []byte("bb"), Xattrs: map[string]string{"security.capability": "cap", "user.a": "b"}},
	}
	b, err := layer(files, mtime)
	if err != nil {
		t.Fatal(err)
	}
	want := `tmp/ dir 1777 0:0
usr/ dir 755 0:0
usr/local/ dir 755 0:0
usr/local/bin/ dir 755 0:0
usr/local/bin/tool reg 750 65532:65533 "tool"
bin/ dir 755 0:0
bin/sh symlink 777 0:0 -> busybox
bin/busybox reg 755 0:0 "bb" SCHILY.xattr.security.capability="cap" SCHILY.xattr.user.a="b"
`
	if got := entries(t, b, mtime); got != want {
		t.Errorf("layer:\n%swant:\n%s", got, want)
	}
	again, err := layer(files, mtime)
	if err != nil || !bytes.Equal(b, again) {
		t.Errorf("a second layer of the same files differs (%v)", err)
	}
}

// entries lists each entry of a tar: name, type, mode, owner, content,
// link and PAX records; it fails the test on an entry not dated mtime.
func entries(t *testing.T, b []byte, mtime time.Time) string {
	t.Helper()
	types := map[byte]string{tar.TypeDir: "dir", tar.TypeReg: "reg", tar.TypeSymlink: "symlink"}
	var out strings.Builder
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(mtime) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, mtime)
		}
		fmt.Fprintf(&out, "%s %s %o %d:%d", h.Name, types[h.Typeflag], h.Mode, h.Uid, h.Gid)
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, " %q", data)
		}
		if h.Linkname != "" {
			fmt.Fprintf(&out, " -> %s", h.Linkname)
		}
		for _, k := range []string{"SCHILY.xattr.security.capability", "SCHILY.xattr.user.a"} {
			if v, ok := h.PAXRecords[k]; ok {
				fmt.Fprintf(&out, " %s=%q", k, v)
			}
		}
		out.WriteString("\n")
	}
}

// TestFileCapabilities: the bytes setcap writes (getfattr -n
// security.capability -e hex after `setcap cap_net_bind_service=+ep`, and
// after `setcap cap_net_bind_service,cap_checkpoint_restore=+ep`, 40 being
// in the high word).
func TestFileCapabilities(t *testing.T) {
	for _, c := range []struct {
		caps []uint
		want string
	}{
		{[]uint{10}, "0100000200040000000000000000000000000000"},
		{[]uint{10, 12}, "0100000200140000000000000000000000000000"},
		{[]uint{10, 40}, "0100000200040000000000000001000000000000"},
	} {
		if got := hex.EncodeToString([]byte(FileCapabilities(c.caps...))); got != c.want {
			t.Errorf("FileCapabilities(%v) = %s, want %s", c.caps, got, c.want)
		}
	}
}
