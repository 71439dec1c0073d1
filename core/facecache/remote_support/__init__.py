"""Remote cache support for the extension: botocore (the S3 client of the remote tier, store/remote.py) and its
pure-Python dependencies, which the extension's zips have no room for, installed on demand into a folder of the
user's (pins.py, layout.py, install.py). The command line gets them from the `remote` extra instead."""
