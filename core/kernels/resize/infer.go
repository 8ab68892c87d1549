package resize
