"""What tqadmin shows, and the rules it is shown by: a broker's strings as data (escaped, never markup),
credentials masked, numbers finite, plain tables for a terminal, log lines through the masking formatter.

The ground floor: every face and every layer below them show through here, and it imports nothing of tqadmin.
"""
