"""The `fusegen` console script: runs the command line tool bundled in the
package (fusegen/_bin/fusegen, built with it), with the same arguments, exit
code and output: `fusegen --help`, `fusegen generate SPEC -o k.cu`,
`fusegen warmup ...` (no GPU needed)."""

import os
import sys

BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "fusegen")


def main():
    if not os.path.isfile(BINARY):
        sys.stderr.write("fusegen: error: %s is missing: this fusegen package was installed without its "
                         "command line tool (reinstall with pip install ./python)\n" % BINARY)
        return 2
    os.execv(BINARY, [BINARY] + sys.argv[1:])
    return 0  # not reached: exec replaces this process


if __name__ == "__main__":
    sys.exit(main())
