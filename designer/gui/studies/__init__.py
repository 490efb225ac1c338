"""The GUI of the studies (`designer.studies`): the Resilience panel, which runs a
failure study of the open design in the background and lists what each failure costs."""
