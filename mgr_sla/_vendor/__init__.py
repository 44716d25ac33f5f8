"""Libraries the module carries itself, as their authors released them (see
README.md here): no Ceph package or container image ships them."""
