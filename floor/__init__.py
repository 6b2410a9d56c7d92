"""The floor's services: the archive of every table's messages in PostgreSQL, round recall and reports.

Layering (pyproject.toml, import-linter): the floor uses the controller's MQTT contract models
(controller.mqtt.contract), its pure core (controller.core) and its broker-URL parser, never its shell, store,
engine or games; the controller never imports the floor. docs/floor.md is the map.
"""
