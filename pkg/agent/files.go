// Package agent keeps an Envoy's X.509 SVID fresh: it creates a key and a
// CSR, has them signed (by the controller's identity service, or in
// standalone mode by the local CA), writes certificate, key and trust
// bundle into a folder that Envoy reads with file-based SDS, and renews
// them at half their lifetime. The key never leaves the pod.
//
// Files are replaced atomically the way Kubernetes updates Secret volumes
// (and the way Envoy's SDS documentation expects): every version goes
// into a fresh hidden folder, a symlink "..data" is switched to it with a
// rename (a move inside the watched folder, which makes Envoy re-read the
// SDS resources, see envoy-bootstrap), and the visible names (tls.crt,
// tls.key, ca.crt) are symlinks through "..data". Envoy never reads a
// certificate of one version with a key of another.
package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
)

// File names in the SDS folder: the bootstrap's (envoy-bootstrap).
const (
	CertFile   = bootstrap.SVIDCertFile
	KeyFile    = bootstrap.SVIDKeyFile
	BundleFile = bootstrap.BundleFile
	// DataLink points at the folder of the current version.
	DataLink = "..data"
)

// WriteAtomic writes files (name -> content, names without slashes) into
// dir as one version: dir/..<version>/<name> (mode 0600, folder 0700),
// switched in by renaming a new symlink over dir/..data, with dir/<name>
// a symlink to ..data/<name>. Older versions are removed afterwards.
// Readers that follow dir/<name> see either the old version or the new
// one, never a mix. version names the folder (callers pass a timestamp);
// it must be new in dir.
func WriteAtomic(dir, version string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if version == "" || strings.ContainsAny(version, "/") {
		return fmt.Errorf("agent: bad version %q", version)
	}
	verName := ".." + version
	verDir := filepath.Join(dir, verName)
	if err := os.Mkdir(verDir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		if name == "" || strings.ContainsAny(name, "/") || strings.HasPrefix(name, "..") {
			return fmt.Errorf("agent: bad file name %q", name)
		}
		if err := writeFileSync(filepath.Join(verDir, name), data, 0o600); err != nil {
			return err
		}
	}
	if err := syncDir(verDir); err != nil {
		return err
	}
	tmp := filepath.Join(dir, DataLink+"_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(verName, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, DataLink)); err != nil {
		return err
	}
	for name := range files {
		link := filepath.Join(dir, name)
		target := filepath.Join(DataLink, name)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		// A missing or wrong entry: replace it by rename, atomically too.
		tmpLink := link + ".." + version
		if err := os.Symlink(target, tmpLink); err != nil {
			return err
		}
		if err := os.Rename(tmpLink, link); err != nil {
			return err
		}
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return removeOldVersions(dir, verName)
}

// removeOldVersions deletes every ..<version> folder of dir but keep.
func removeOldVersions(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() || !strings.HasPrefix(n, "..") || n == keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// VersionName is a folder name for a version written at t: its UTC time
// to the nanosecond, sortable.
func VersionName(t time.Time) string {
	return t.UTC().Format("2006_01_02_15_04_05.") + strconv.Itoa(t.Nanosecond())
}

func writeFileSync(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot sync folders; that is not an error here.
	_ = d.Sync()
	return nil
}
