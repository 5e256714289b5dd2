"""assay's private machinery, shared by the packages above it and used by no user: reading
files with positions in errors (:mod:`.files`), telling file kinds apart (:mod:`.file_kinds`),
streaming large JSON inputs (:mod:`.json_stream`) into the run's spill file (:mod:`.spill`),
keeping finished results out of the garbage collector's way (:mod:`.collector`) and running a
coroutine from sync code (:mod:`.aio`). Nothing here imports another assay package but
:mod:`assay.errors`."""
