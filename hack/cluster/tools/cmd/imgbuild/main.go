// Command imgbuild builds a single-layer OCI image from files on this machine,
// without Docker, and writes it as an image tarball (docker save layout) that
// `ctr images import` reads. Every -image name is written into the tarball.
//
//	imgbuild -out envoy.tar -image docker.io/envoyproxy/envoy:v1.40.0 \
//	    -file /path/to/envoy=/usr/local/bin/envoy -entrypoint /usr/local/bin/envoy
package main

import (
	"archive/tar"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var images, files, envs, entrypoint, cmd multi
	out := flag.String("out", "", "output tarball")
	workdir := flag.String("workdir", "/", "working directory")
	user := flag.String("user", "", "user (uid[:gid]); empty is root")
	flag.Var(&images, "image", "image name (repeatable; all tags go into the tarball)")
	flag.Var(&files, "file", "SRC=DST: copy host file SRC (symlinks followed) to DST in the image (repeatable)")
	flag.Var(&envs, "env", "KEY=VALUE (repeatable)")
	flag.Var(&entrypoint, "entrypoint", "entrypoint word (repeatable, in order)")
	flag.Var(&cmd, "cmd", "cmd word (repeatable, in order)")
	flag.Parse()
	if *out == "" || len(images) == 0 || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "usage: imgbuild -out FILE -image NAME... -file SRC=DST... [-entrypoint W...] [-cmd W...] [-env K=V...]")
		os.Exit(2)
	}
	if err := run(*out, images, files, envs, entrypoint, cmd, *workdir, *user); err != nil {
		fmt.Fprintln(os.Stderr, "imgbuild:", err)
		os.Exit(1)
	}
}

func run(out string, images, files, envs, entrypoint, cmd []string, workdir, user string) error {
	layerPath := out + ".layer.tar"
	defer os.Remove(layerPath)
	if err := writeLayer(layerPath, files); err != nil {
		return err
	}
	layer, err := tarball.LayerFromFile(layerPath)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cf.Config.Env = append(env, envs...)
	cf.Config.Entrypoint, cf.Config.Cmd = entrypoint, cmd
	cf.Config.WorkingDir, cf.Config.User = workdir, user
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for _, n := range images {
		tag, err := name.NewTag(n, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("image name %q must be fully qualified with a tag: %w", n, err)
		}
		refs[tag] = img
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// writeLayer writes a reproducible tar of files (and their parent folders),
// owned by root, with the host files' permission bits.
func writeLayer(dst string, files []string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	mtime := time.Unix(0, 0)
	dirs := map[string]bool{}
	type entry struct{ src, dst string }
	var entries []entry
	for _, spec := range files {
		src, d, ok := strings.Cut(spec, "=")
		if !ok || !path.IsAbs(d) {
			return fmt.Errorf("bad -file %q: want SRC=/absolute/dst", spec)
		}
		entries = append(entries, entry{src, path.Clean(d)})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].dst < entries[j].dst })
	// Folders every image has.
	for _, d := range []string{"/tmp", "/etc", "/dev", "/proc", "/sys", "/var/run"} {
		entries = append(entries, entry{"", d})
	}
	var addDir func(string) error
	addDir = func(d string) error {
		if d == "/" || d == "." || dirs[d] {
			return nil
		}
		if err := addDir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		mode := int64(0o755)
		if d == "/tmp" {
			mode = 0o1777
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: mode, ModTime: mtime, Format: tar.FormatPAX})
	}
	for _, e := range entries {
		if e.src == "" {
			if err := addDir(e.dst); err != nil {
				return err
			}
			continue
		}
		if err := addDir(path.Dir(e.dst)); err != nil {
			return err
		}
		st, err := os.Stat(e.src)
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a folder; list files one by one", e.src)
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(e.dst, "/"), Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		in, err := os.Open(e.src)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, in)
		in.Close()
		if err != nil {
			return err
		}
	}
	// /etc/passwd and /etc/group with root and nobody, so user lookups work.
	for _, nb := range [][2]string{
		{"etc/group", "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
		{"etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
	} {
		n, body := nb[0], nb[1]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(body)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
