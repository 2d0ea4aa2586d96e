"""The rules of the engine, storage-free: private (the face is ``branchmem`` and its
public modules); nothing here is imported by name from outside the package."""
