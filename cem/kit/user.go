package kit

import (
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Unreachable returns the first directory from dir up to / that user u cannot enter, with its
// mode, or "" when u can enter every one: a server run as u (PostgreSQL refuses root; rsync's
// state transfer fails as root) needs them all. The kernel checks the owner's bits for the
// owner, else the group's for a member, else the others'.
func Unreachable(dir string, u *user.User) (string, fs.FileMode, error) {
	uid, _ := strconv.Atoi(u.Uid)
	gids := map[uint32]bool{}
	groups, _ := u.GroupIds()
	for _, g := range append(groups, u.Gid) {
		if id, err := strconv.Atoi(g); err == nil {
			gids[uint32(id)] = true
		}
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return "", 0, err
		}
		st := fi.Sys().(*syscall.Stat_t)
		perm := fi.Mode().Perm()
		var enter bool
		switch {
		case st.Uid == uint32(uid):
			enter = perm&0o100 != 0
		case gids[st.Gid]:
			enter = perm&0o010 != 0
		default:
			enter = perm&0o001 != 0
		}
		if !enter {
			return d, fi.Mode(), nil
		}
		if d == "/" || d == "." {
			return "", 0, nil
		}
	}
}
