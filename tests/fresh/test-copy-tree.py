#!/usr/bin/env python3
"""freshchroot.copy_tree on a tree that is not a git checkout (a release
tarball's): symlinks to directories and to files arrive as symlinks, with
their targets as they were, and the sysfs fixtures arrive whole (every one
of their symlinks). Needs no root and no chroot."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import freshchroot  # noqa: E402

SRCDIR = os.environ.get("SRCDIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def links_under(root):
    """{relative path: link target} of every symlink below root."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                found[os.path.relpath(full, root)] = os.readlink(full)
    return found


def check_small_tree(tmp):
    src = os.path.join(tmp, "src")
    os.makedirs(os.path.join(src, "sys/block/nvme0n1/device"))
    with open(os.path.join(src, "sys/block/nvme0n1/device/model"), "w") as f:
        f.write("Amazon Elastic Block Store\n")
    os.makedirs(os.path.join(src, "sys/class/block"))
    os.symlink("../../block/nvme0n1", os.path.join(src, "sys/class/block/nvme0n1"))  # to a directory
    os.symlink("nvme0n1/device/model", os.path.join(src, "sys/block/model"))  # to a file
    os.makedirs(os.path.join(src, "build/meson-private"))  # a build directory: left out
    dst = os.path.join(tmp, "dst")
    assert not freshchroot.is_git_checkout(src)
    freshchroot.copy_tree(src, dst)
    want = {"sys/class/block/nvme0n1": "../../block/nvme0n1", "sys/block/model": "nvme0n1/device/model"}
    got = links_under(dst)
    assert got == want, f"symlinks copied: {got}, want {want}"
    with open(os.path.join(dst, "sys/class/block/nvme0n1/device/model")) as f:
        assert f.read() == "Amazon Elastic Block Store\n", "the copy's directory link does not resolve"
    assert not os.path.exists(os.path.join(dst, "build")), "a build directory was copied"
    print(f"small tree: {len(got)} symlinks as symlinks, the directory link resolves")


def check_fixtures(tmp):
    """The project's own fixtures, copied as from a tarball (no .git)."""
    src = os.path.join(SRCDIR, "tests/fixtures")
    want = links_under(src)
    assert len(want) >= 60, f"only {len(want)} symlinks under {src}"
    dst = os.path.join(tmp, "fixtures")
    freshchroot.copy_tree(src, dst)
    got = links_under(dst)
    missing = sorted(set(want) - set(got))
    assert not missing, f"{len(missing)} of {len(want)} fixture symlinks not copied, e.g. {missing[:3]}"
    wrong = sorted(p for p in want if got[p] != want[p])
    assert not wrong, f"fixture symlinks with other targets: {wrong[:3]}"
    print(f"tests/fixtures: all {len(want)} symlinks copied as symlinks")


def main():
    with tempfile.TemporaryDirectory(prefix="iopsd-copy-tree-") as tmp:
        check_small_tree(tmp)
        check_fixtures(tmp)


if __name__ == "__main__":
    main()
