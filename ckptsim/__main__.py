"""``python -m ckptsim``: the ``ckptsim`` command line."""

from ckptsim._cli import console

if __name__ == "__main__":
    console()
