"""Команды ``python -m autograde``: по модулю на команду (``NAME``, ``HELP``, ``add_arguments``, ``run``)."""
