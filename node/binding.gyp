# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The addon kratelimit.node, over libratelimit.so.1: in the source tree the
# one `make lib` built (build/lib, found at run time through the rpath),
# elsewhere the system's (scripts/paths.js). C++ exceptions are off: every
# native call returns -errno, which index.js turns into an Error.
{
  "targets": [{
    "target_name": "kratelimit",
    "sources": ["src/kratelimit.cc"],
    "include_dirs": [
      "<!@(node scripts/paths.js include)",
      "<!(node scripts/paths.js napi)"
    ],
    "defines": ["NAPI_DISABLE_CPP_EXCEPTIONS", "NAPI_VERSION=8"],
    "cflags_cc": ["-Wall", "-Wextra", "-Wno-unused-parameter"],
    "variables": {"rl_libdir": "<!(node scripts/paths.js lib)"},
    "conditions": [
      ["rl_libdir != ''", {
        "libraries": ["-L<(rl_libdir)", "-lratelimit",
                      "-Wl,-rpath,<(rl_libdir)"]
      }, {
        "libraries": ["-lratelimit"]
      }]
    ]
  }]
}
