package role

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
)

// SysfsRoot is where the RDMA devices' sysfs tree is read from (tests
// point it at a fake tree).
var SysfsRoot fs.FS = os.DirFS("/sys")

// RoCE v2 address selection. A ConnectX port's GID table holds, per IP
// address of its netdev, a RoCE v1 and a RoCE v2 entry (the kernel's
// gid_attrs/types/N says which); index 0 is the link-local RoCE v1 GID.
// A verbs application that opens index 0 talks RoCE v1 (layer 2, no IP
// header, so no DSCP and no ECN), which is not what besim models. autoGID
// picks the RoCE v2 entry of the role's data IP, or the first IPv4-mapped
// RoCE v2 entry if no entry has that IP.

// autoGID returns the GID index to use on dev's port for ip, and a
// sentence saying how it was chosen.
func autoGID(dev string, port int, ip net.IP) (int, string, error) {
	dir := path.Join("class/infiniband", dev, "ports", strconv.Itoa(port))
	types, err := fs.ReadDir(SysfsRoot, path.Join(dir, "gid_attrs/types"))
	if err != nil {
		return 0, "", fmt.Errorf("GID auto-selection: %w (set the role parameter gid_index)", err)
	}
	first, firstGID := -1, ""
	for _, e := range types {
		i, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		t, err := fs.ReadFile(SysfsRoot, path.Join(dir, "gid_attrs/types", e.Name()))
		if err != nil || !strings.EqualFold(strings.TrimSpace(string(t)), "RoCE v2") {
			continue // unused entries fail to read (EINVAL)
		}
		g, err := fs.ReadFile(SysfsRoot, path.Join(dir, "gids", e.Name()))
		if err != nil {
			continue
		}
		gip := parseGID(strings.TrimSpace(string(g)))
		if gip == nil || gip.To4() == nil {
			continue
		}
		if ip != nil && gip.Equal(ip) {
			return i, fmt.Sprintf("GID index %d: the RoCE v2 GID of %s on %s port %d", i, ip, dev, port), nil
		}
		if first < 0 || i < first {
			first, firstGID = i, gip.String()
		}
	}
	if first < 0 {
		return 0, "", errors.New("GID auto-selection: " + dev + " port " + strconv.Itoa(port) + " has no IPv4 RoCE v2 GID (is an IPv4 address on its netdev?); set the role parameter gid_index")
	}
	return first, fmt.Sprintf("GID index %d: the first IPv4 RoCE v2 GID (%s) on %s port %d; none has the data IP %v", first, firstGID, dev, port, ip), nil
}

// parseGID reads a sysfs GID ("0000:0000:0000:0000:0000:ffff:c0a8:0101").
func parseGID(s string) net.IP {
	parts := strings.Split(s, ":")
	if len(parts) != 8 {
		return nil
	}
	ip := make(net.IP, 16)
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return nil
		}
		ip[2*i], ip[2*i+1] = byte(v>>8), byte(v)
	}
	return ip
}
