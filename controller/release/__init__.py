"""The release: a signed manifest of every file of the installed controller, and its check at start (605a.4(c),
docs/software.md). `manifest` is pure (bytes in, verdicts out); `installed` reads the installed tree and the
manifest file; `keyfile` keeps the release key."""
