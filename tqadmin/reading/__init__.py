"""The read service: one profile's broker, store and cron read once for every face (the dashboard, the
exporter, the read commands), as :class:`~tqadmin.reading.reading.ProfileReading` values from a
:class:`~tqadmin.reading.reader.ProfileReader`. It sits below the faces and beside the admin actions: the
write side's service is :mod:`tqadmin.admin`."""
