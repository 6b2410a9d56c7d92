"""Device interfaces, plugin registry, the reference serial protocol and the device simulators."""
