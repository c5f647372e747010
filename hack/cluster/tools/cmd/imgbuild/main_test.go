package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestBuildsImportableImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	names := []string{"registry.k8s.io/test/prog:v1", "docker.io/library/prog:v2"}
	if err := run(out, names, []string{bin + "=/usr/local/bin/prog"}, []string{"A=b"}, []string{"/usr/local/bin/prog"}, []string{"-x"}, "/", ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		tag, err := name.NewTag(n)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(out, &tag)
		if err != nil {
			t.Fatalf("%s not in the tarball: %v", n, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != "amd64" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/usr/local/bin/prog" || cf.Config.Cmd[0] != "-x" {
			t.Errorf("config: %+v", cf.Config)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers: %v %v", layers, err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]int64{}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			found[h.Name] = h.Mode
		}
		rc.Close()
		if found["usr/local/bin/prog"] != 0o755 {
			t.Errorf("binary missing or wrong mode: %v", found)
		}
		if _, ok := found["etc/passwd"]; !ok {
			t.Errorf("no /etc/passwd: %v", found)
		}
		if found["tmp/"] != 0o1777 {
			t.Errorf("/tmp mode %o", found["tmp/"])
		}
	}
}
