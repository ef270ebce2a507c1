"""firn.io: the FileIO protocol, the pyarrow.fs implementation and the in-memory fake."""

from firn.io.base import FileInfo, FileIO, InputFile, OutputFile, read_all
from firn.io.limits import ReadLimit, ReadLimits
from firn.io.memory import InMemoryFileIO
from firn.io.pyarrow_io import PyArrowFileIO, load_file_io

__all__ = [
    "FileIO",
    "FileInfo",
    "InMemoryFileIO",
    "InputFile",
    "OutputFile",
    "PyArrowFileIO",
    "ReadLimit",
    "ReadLimits",
    "load_file_io",
    "read_all",
]
