package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// File is one entry of a layer: a regular file, a directory (Path ends in
// a slash) or a symlink (Link is set).
type File struct {
	Path string // in the image, absolute
	Mode int64  // permission bits, with setuid, setgid and sticky (0o1777)
	// UID and GID own the entry; 0, root, unless set.
	UID, GID int
	Data     []byte // a regular file's content
	Link     string // a symlink's target, else ""
	// Xattrs are extended attributes by name (security.capability), kept
	// as PAX records as docker build stores them.
	Xattrs map[string]string
}

// parentMode is the mode of a directory no File names but one is in.
const parentMode = 0o755

// layer writes files as an uncompressed tar, in the order given, each
// directory above a file written first (mode 0755, root) unless it was
// already written; every time is mtime, so the same files give the same
// bytes. A directory named after it was written as a parent is skipped:
// callers who want its mode list it before what it holds (sorting by path
// does).
func layer(files []File, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		for _, d := range parents(f.Path) {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: parentMode, ModTime: mtime}); err != nil {
				return nil, fmt.Errorf("layer %s: %w", d, err)
			}
		}
		if err := writeEntry(tw, f, mtime, dirs); err != nil {
			return nil, fmt.Errorf("layer %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}

// writeEntry writes one File's header and content; dirs are the
// directories written so far.
func writeEntry(tw *tar.Writer, f File, mtime time.Time, dirs map[string]bool) error {
	hdr := &tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: mtime}
	if len(f.Xattrs) > 0 {
		hdr.PAXRecords = map[string]string{}
		for k, v := range f.Xattrs {
			hdr.PAXRecords["SCHILY.xattr."+k] = v
		}
	}
	switch {
	case strings.HasSuffix(hdr.Name, "/"):
		if dirs[hdr.Name] {
			return nil
		}
		dirs[hdr.Name] = true
		hdr.Typeflag = tar.TypeDir
	case f.Link != "":
		// A symlink's own mode means nothing on Linux; 0777 is what ln -s
		// gives.
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
	default:
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	_, err := tw.Write(f.Data)
	return err
}

// parents lists the directories above a path, outermost first, as tar
// names ("usr/", "usr/bin/").
func parents(path string) []string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var out []string
	for i := 1; i < len(parts); i++ {
		out = append(out, strings.Join(parts[:i], "/")+"/")
	}
	return out
}

// CapabilityXattr is the name of the extended attribute that holds a
// file's capabilities.
const CapabilityXattr = "security.capability"

// FileCapabilities is the value of the security.capability extended
// attribute (struct vfs_cap_data, revision 2) that `setcap cap_x,cap_y=+ep`
// writes: the capabilities caps (numbers from linux/capability.h, below
// 64) permitted and effective, none inheritable.
func FileCapabilities(caps ...uint) string {
	const (
		vfsCapRevision2      = 0x02000000
		vfsCapFlagsEffective = 0x000001
	)
	var permitted uint64
	for _, c := range caps {
		permitted |= 1 << c
	}
	// The magic, then {permitted, inheritable} for the low 32
	// capabilities, then for the high 32.
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], vfsCapRevision2|vfsCapFlagsEffective)
	binary.LittleEndian.PutUint32(b[4:], uint32(permitted))
	binary.LittleEndian.PutUint32(b[12:], uint32(permitted>>32))
	return string(b)
}
